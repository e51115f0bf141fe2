# shellcheck shell=bash
# The TAP harness of the repository's shell end-to-end scripts (make cleanup-e2e, make
# sylva-e2e), sourced by each: `check "what" ASSERTION ARGS...` prints one TAP line, the
# assertions print what they expected as TAP comments, and `tap_done NAME` prints the plan and a
# summary, and fails when a check failed. Needs $T, the script's temporary directory.
n=0 passed=0 failed=0

check() { # check "description" command...
  n=$((n + 1))
  if "${@:2}"; then
    echo "ok $n - $1"
    passed=$((passed + 1))
  else
    echo "not ok $n - $1"
    failed=$((failed + 1))
  fi
}

# capture COMMAND...: runs it, setting OUT (its stdout), ERR (its stderr) and CODE (its status).
# shellcheck disable=SC2034 # set for the script that sources this file
capture() {
  set +e
  OUT=$("$@" 2>"$T/capture.err")
  CODE=$?
  set -e
  ERR=$(cat "$T/capture.err")
}

# Prints TEXT as TAP comments, a line each.
comment() { while IFS= read -r line; do echo "#   $line"; done <<<"$1"; }
has() { grep -qF -- "$2" <<<"$1" || { echo "# expected: $2"; comment "$1"; return 1; }; }
is() { [ "$1" = "$2" ] || { echo "# expected $2, got $1"; return 1; }; }
isnt() { [ "$1" != "$2" ] || { echo "# expected anything but $2"; return 1; }; }

tap_done() { # tap_done NAME
  echo "1..$n"
  echo "$1: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
