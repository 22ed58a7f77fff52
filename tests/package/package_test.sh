#!/usr/bin/env bash
# The Debian packages end to end: built with CPack from this build, checked by lintian, installed with apt-get,
# run from /usr/bin (the console's --version offscreen and a start that loads its installed plugins; the installed
# worker running a built-in job to completion and a Python job that imports the installed helper), then purged,
# leaving none of their files behind.
#   package_test.sh SOURCE_DIR BUILD_DIR
# Installing needs root (or sudo without a password) and packages not installed already (it would purge them):
# otherwise it skips (exit 77), which TRAINDECK_REQUIRE_ALL=1 makes a failure. Every wait has a timeout guarding
# against a hang; none paces the test.
set -euo pipefail
source_dir="$1"
build_dir="$2"
work="$(mktemp -d /tmp/traindeck-package-test.XXXXXX)"
worker_pid=""
installed=0

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi
}

stop_console_worker() {
  if [ -s "${console_worker:-/nonexistent}/pid" ]; then
    local pid
    pid="$(cat "$console_worker/pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  fi
}

cleanup() {
  stop_console_worker
  if [ -n "$worker_pid" ]; then kill "$worker_pid" 2>/dev/null || true; wait "$worker_pid" 2>/dev/null || true; fi
  if [ "$installed" = 1 ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq traindeck traindeck-worker >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "package_test: FAIL: $*" >&2; exit 1; }
skip() {
  echo "package_test: $*"
  if [ "${TRAINDECK_REQUIRE_ALL:-0}" = 1 ]; then
    echo "package_test: TRAINDECK_REQUIRE_ALL=1: nothing may be skipped"
    exit 1
  fi
  exit 77
}

for tool in cpack dpkg-deb dpkg-shlibdeps lintian desktop-file-validate appstreamcli; do
  command -v "$tool" >/dev/null || skip "$tool is missing (bash installer/install-deps.sh --tests installs it)"
done

# 1. Build the packages from this build tree (into a folder of the test's own, so a run never races another).
(cd "$build_dir" && cpack -G DEB -B "$work/packages" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack failed"; }
console_deb="$(ls "$work"/packages/traindeck_*.deb)"
worker_deb="$(ls "$work"/packages/traindeck-worker_*.deb)"
echo "package_test: built $(basename "$console_deb") and $(basename "$worker_deb")"

# 2. Their metadata: names, sections, dependencies from dpkg-shlibdeps, the console needing the worker.
for deb in "$console_deb" "$worker_deb"; do
  dpkg-deb -I "$deb" control | sed 's/^/  /'
  [ "$(dpkg-deb -f "$deb" Section)" = science ] || fail "$(basename "$deb"): section is not science"
done
dpkg-deb -f "$console_deb" Depends | grep -q 'libqt6widgets6' || fail "the console's Depends lacks Qt (shlibdeps?)"
dpkg-deb -f "$console_deb" Depends | grep -q 'traindeck-worker (= ' || fail "the console does not depend on its worker"
dpkg-deb -f "$worker_deb" Depends | grep -q 'libsqlite3-0' || fail "the worker's Depends lacks SQLite (shlibdeps?)"
if dpkg-deb -f "$worker_deb" Depends | grep -q 'libqt6'; then fail "the headless worker depends on Qt"; fi
console_files="$(dpkg-deb -c "$console_deb")"
worker_files="$(dpkg-deb -c "$worker_deb")"
grep -q './usr/share/applications/io.traindeck.TrainDeck.desktop' <<<"$console_files" || fail "no desktop entry"
grep -q './usr/lib/traindeck/plugins/libtraindeck_backend_local.so' <<<"$console_files" || fail "no local plugin"
grep -q './lib/systemd/system/traindeck-worker.service' <<<"$worker_files" || fail "no systemd unit"
grep -q './usr/lib/python3/dist-packages/traindeck.py' <<<"$worker_files" || fail "no Python helper"

# 3. lintian: no error and no warning. What it still says is information only: .comment sections in the binaries
# (CPack strips with plain strip) and no init.d script beside the systemd unit (this package is for systemd).
lintian --fail-on error,warning --tag-display-limit 0 --display-info "$console_deb" "$worker_deb" \
  || fail "lintian reports errors or warnings (above)"
echo "package_test: lintian clean"
desktop-file-validate "$source_dir/resources/io.traindeck.TrainDeck.desktop" || fail "desktop-file-validate"
appstreamcli validate --no-net "$source_dir/resources/io.traindeck.TrainDeck.metainfo.xml" >/dev/null \
  || fail "appstreamcli validate"

# 4. Install them as a user would.
if [ "$(id -u)" -ne 0 ] && ! sudo -n true 2>/dev/null; then
  skip "installing the packages needs root or password-less sudo"
fi
for package in traindeck traindeck-worker; do
  if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    skip "$package is installed on this machine already; the test would purge it (remove it first)"
  fi
done
# What the system holds before (every path named after us under the folders packages and their scripts write: the
# unit's links and state, bytecode, docs), to compare after the purge: dpkg's own list would miss what the maintainer
# scripts leave. Paths not named after us are left out, so that nothing else the machine does meanwhile counts.
system_paths() {
  find /etc /usr /lib /opt /var/lib/systemd -xdev 2>/dev/null | { grep -i traindeck || true; } | sort
}
system_paths >"$work/before.txt"
installed=1
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$console_deb" "$worker_deb" \
  >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install failed"; }
getent passwd traindeck >/dev/null || fail "the worker package did not create the user traindeck"
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify /lib/systemd/system/traindeck-worker.service || fail "systemd-analyze verify of the unit"
fi

# 5. The installed console: its version, and a start that finds its installed plugins and local worker.
version="$(QT_QPA_PLATFORM=offscreen /usr/bin/traindeck --version)"
echo "package_test: $version"
[[ "$version" == "traindeck "* ]] || fail "traindeck --version said: $version"
[ "$(/usr/bin/traindeck-worker --version)" = "${version/traindeck/traindeck-worker}" ] || fail "worker version"
trainer_version="$(/usr/bin/traindeck-train --version)"
echo "$trainer_version" | sed 's/^/  /'
[ "${trainer_version%%$'\n'*}" = "${version/traindeck/traindeck-train}" ] || fail "trainer version"
[ "$(/usr/bin/traindeck-cli --version)" = "${version/traindeck/traindeck-cli}" ] || fail "traindeck-cli version"
# The installed command line imports a metrics table into a catalog of its own and lists it (its plugins and
# libraries from the package's folders).
mkdir -p "$work/home"
printf 'step,loss\n1,0.5\n2,0.25\n' >"$work/cli-run.csv"
HOME="$work/home" XDG_CONFIG_HOME="$work/home/config" /usr/bin/traindeck-cli --catalog "$work/cli.db" import \
  "$work/cli-run.csv" >"$work/cli.log" 2>&1 || { cat "$work/cli.log"; fail "traindeck-cli import"; }
HOME="$work/home" XDG_CONFIG_HOME="$work/home/config" /usr/bin/traindeck-cli --catalog "$work/cli.db" --json ls \
  | python3 -c 'import json, sys; runs = json.load(sys.stdin); assert [r["name"] for r in runs] == ["cli-run"], runs' \
  || fail "traindeck-cli ls of the imported run"
mkdir -p "$work/home"
# (The local worker it starts outlives it, as it should: it is stopped by the pid it writes.)
console_worker="$work/console-worker"
if ! HOME="$work/home" XDG_DATA_HOME="$work/home/data" QT_QPA_PLATFORM=offscreen TRAINDECK_PLUGIN_DIR= \
  timeout 120 /usr/bin/traindeck --no-demo --worker-state-dir "$console_worker" --screenshot "$work/console.png" \
  --after 1 >"$work/console.log" 2>&1; then
  cat "$work/console.log"
  fail "the installed console did not start and take its screenshot"
fi
stop_console_worker
[ -s "$work/console.png" ] || fail "the installed console wrote no screenshot"
if grep -q "plugin:" "$work/console.log"; then cat "$work/console.log"; fail "the installed console's plugins"; fi

# 6. The installed worker runs a built-in job (through the installed traindeck-train) and a Python job importing the
# installed helper, each to completion.
state="$work/worker"
mkdir -p "$state"
/usr/bin/traindeck-worker --listen 127.0.0.1:0 --state-dir "$state" >"$work/worker.log" 2>&1 &
worker_pid=$!
for _ in $(seq 1 400); do [ -s "$state/port" ] && break; sleep 0.05; done
[ -s "$state/port" ] || { cat "$work/worker.log"; fail "the installed worker wrote no port"; }
url="http://127.0.0.1:$(cat "$state/port")"
auth="Authorization: Bearer $(cat "$state/token")"
submit() {
  curl -sS --fail-with-body -H "$auth" -H 'Content-Type: application/json' -d "$1" "$url/v1/jobs" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}
wait_done() { # JOB: waits for its end (timeout 300 s), prints its state
  local state_now=""
  for _ in $(seq 1 3000); do
    state_now="$(curl -sS -H "$auth" "$url/v1/jobs/$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')"
    case "$state_now" in succeeded|failed|cancelled|stopped|lost) break ;; esac
    sleep 0.1
  done
  echo "$state_now"
}
data_limit=2000
if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  skip "dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)"
fi
builtin_job="$(submit '{"name": "installed", "builtin": {"model": "mlp", "hidden": [32], "epochs": 1, "batch_size": 64,
  "data": {"dataset": "fashion-mnist", "limit": '"$data_limit"'}}}')"
python_job="$(submit '{"name": "helper", "argv": ["/usr/bin/python3", "-c",
  "import traindeck; traindeck.config({\"x\": 1}); traindeck.log(1, loss=0.5)"]}')"
[ "$(wait_done "$builtin_job")" = succeeded ] || { curl -sS -H "$auth" "$url/v1/jobs/$builtin_job"; fail "built-in job"; }
[ "$(wait_done "$python_job")" = succeeded ] || { curl -sS -H "$auth" "$url/v1/jobs/$python_job"; fail "Python job"; }
# Into a file, not an argument: the test set's record carries the gallery's thumbnails (hundreds of KB, past the
# 128 KB an argument may have).
curl -sS -H "$auth" "$url/v1/jobs/$builtin_job/events?after=0" -o "$work/builtin-events.json"
python3 - "$work/builtin-events.json" <<'PY' || fail "the built-in job's events"
import json, sys
events = json.load(open(sys.argv[1]))["events"]
evals = [e for e in events if e["type"] == "record" and e["data"].get("type") == "eval"]
assert evals and evals[-1]["data"]["accuracy"] > 0.5, evals[-1:]
print("package_test: built-in job through the installed worker: accuracy", evals[-1]["data"]["accuracy"])
PY
curl -sS -H "$auth" "$url/v1/jobs/$python_job/events?after=0" -o "$work/python-events.json"
python3 - "$work/python-events.json" <<'PY' || fail "the Python job's events (the installed helper)"
import json, sys
events = json.load(open(sys.argv[1]))["events"]
metrics = [e["data"] for e in events if e["type"] == "record" and e["data"].get("type") == "metric"]
assert metrics == [{"type": "metric", "step": 1, "loss": 0.5}] or (len(metrics) == 1 and metrics[0]["loss"] == 0.5), metrics
print("package_test: Python job through the installed helper: metric", metrics[0])
PY
kill "$worker_pid"
wait "$worker_pid" || true
worker_pid=""

# 7. Purge: the system is as it was before the install (the packages' files, and what their scripts made: the
# unit's state, links), but for the user data and the system user traindeck, which stay by design.
as_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq traindeck traindeck-worker >"$work/purge.log" 2>&1 \
  || { cat "$work/purge.log"; fail "apt-get purge failed"; }
installed=0
system_paths >"$work/after.txt"
if ! diff "$work/before.txt" "$work/after.txt" >"$work/left.txt"; then
  sed 's/^/  /' "$work/left.txt"
  fail "the system differs after apt-get purge (> left behind, < gone)"
fi
for package in traindeck traindeck-worker; do
  if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "installed"; then fail "$package still installed"; fi
done
echo "package_test: installed, ran and purged cleanly"
