"""Operations that change notes (add with its corrections, grade, promotion, audit):
functions over the vault's write primitives, each touching only the notes it names."""
