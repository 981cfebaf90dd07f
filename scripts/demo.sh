#!/usr/bin/env bash
# A tour of vaultmem on a fresh demo vault: add, learn, recall, grade, review, decay, prompt,
# corrections, promotion, the ledger, redaction, and the watcher.
set -euo pipefail
vault="${1:-demo-vault}"
rm -rf "$vault"
mkdir -p "$vault"
vault=$(cd "$vault" && pwd)
export VAULTMEM_VAULT="$vault"
show() { local out="" a; for a in "$@"; do [[ "$a" =~ [[:space:]] ]] && out+=" \"$a\"" || out+=" $a"; done; printf '\n\033[1m$%s\033[0m\n' "$out"; }
step() { show "$@"; "$@"; }

step vaultmem init "$vault"
step vaultmem add "The staging database runs Postgres 16 on port 5433" -n work/infra --tags db,staging
step vaultmem add "Alice prefers tabs over spaces in Go code" -n team --tags style
step vaultmem add "We moved CI from Jenkins to GitHub Actions in March 2025" -n work/ci --created 2025-03-14T10:00:00
step vaultmem learn "Deploy the API" --trigger "a release tag is pushed" \
  --steps "1. run the tests 2. build the image 3. helm upgrade api" \
  --outcome "new pods healthy, error rate flat" --lessons "run the migrations before the upgrade" -n work
step vaultmem recall "which port does the staging postgres use"
id=$(vaultmem recall "staging postgres port" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
step vaultmem grade "$id" good -c "used it to connect"
step vaultmem show "$id"
step vaultmem recall "how do I ship a release" --type skill
step vaultmem review
step vaultmem prompt --max-tokens 300
step vaultmem decay --dry-run

# Corrections: a clear contradiction supersedes the older memory; the same fact again is a recurrence.
step vaultmem conflicts "The staging database runs Postgres 17 on port 5433" -n work/infra
step vaultmem add "The staging database runs Postgres 17 on port 5433" -n work/infra --tags db,staging
step vaultmem recall "which postgres version is on staging" --history
id=$(vaultmem recall "staging postgres port" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
VAULTMEM_SESSION=s2 step vaultmem add "Alice prefers tabs over spaces in Go code" -n team
step vaultmem why "postgres on staging"
# Secrets never land in the vault: refused, or masked with --redact.
show vaultmem add "the deploy key is AKIA...(fake)" -n work
vaultmem add "the deploy key is AKIA$(printf 'IOSFODNN7DEMOKEY' | tr 'O' 'Q')" -n work || true
# Promotion is earned; `promote` only proposes and stages.
for s in s3 s4; do VAULTMEM_SESSION=$s vaultmem grade "$id" good -q; done
VAULTMEM_NOW=$(date -u -d tomorrow +%Y-%m-%dT%H:%M:%S 2>/dev/null || date -u -v+1d +%Y-%m-%dT%H:%M:%S) \
  VAULTMEM_SESSION=s5 step vaultmem grade "$id" good
VAULTMEM_NOW=$(date -u -d tomorrow +%Y-%m-%dT%H:%M:%S 2>/dev/null || date -u -v+1d +%Y-%m-%dT%H:%M:%S) step vaultmem promote
# The ledger: every change is on a hash chain; a hand edit without the watcher is caught.
step vaultmem verify --strict
printf "\n# someone edits a note behind vaultmem's back\n"
sed -i.bak 's/port 5433/port 6543/' "$vault"/memories/work/infra/the-staging-database-runs-postgres-17*.md && rm -f "$vault"/memories/work/infra/*.bak
step vaultmem verify --strict || true
step vaultmem verify
step vaultmem health

# The watcher keeps the indexes current and answers recall for hooks.
show vaultmem watch '&'
log=$(mktemp)
vaultmem watch >"$log" 2>&1 & watcher=$!
trap 'kill $watcher 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do grep -q "serving recall" "$log" && break; sleep 0.2; done
cat "$log"
note=$(ls "$vault"/memories/team/*.md | head -n 1)
printf "\n# a person edits %s by hand: tabs -> spaces\n" "${note#$vault/}"
sed -i.bak 's/prefers tabs over spaces/now prefers spaces over tabs/' "$note" && rm -f "$note.bak"
sleep 1
step vaultmem recall "what indentation does alice like now"
kill $watcher 2>/dev/null; wait $watcher 2>/dev/null || true
printf '\nThe demo vault is in %s: open it in Obsidian, or read the notes with any editor.\n' "$vault"
