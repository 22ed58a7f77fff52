#!/usr/bin/env bash
# A TEST provider, not a cloud: the provider file of tests/ui/provider_test.cpp points its create, list, address and
# delete commands here. An "instance" is a folder CLOUD/NAME with its own home and a real sshd (Debian's
# openssh-server) on a free loopback port, run as the test's user; deleting one stops its sshd and everything its
# worker started (by the pids in the worker's state folder, never by a pattern), as a cloud's delete ends the machine.
#
#   test-cloud-provider.sh CLOUD create NAME TYPE LABEL   prints the id (the name)
#   test-cloud-provider.sh CLOUD list LABEL               one live instance a line
#   test-cloud-provider.sh CLOUD address ID               127.0.0.1:PORT
#   test-cloud-provider.sh CLOUD delete ID
#
# CLOUD/authorized_keys is the key every instance accepts (the test's). A type whose name starts with "unbootable"
# makes an instance that never answers (its address is a port nothing listens on); one starting with "held" has no
# address until CLOUD/boot exists (a machine the cloud has not given an address yet: the test paces its boot). When CLOUD/ledger names a catalog,
# create first checks that the instance is already recorded there as "creating" (the console records before it
# asks); TEST_CLOUD_SKIP_LEDGER=1 skips that, for the test's own strays. CLOUD/calls logs every call.
set -euo pipefail
cloud=$1 verb=$2
shift 2
echo "$verb $*" >> "$cloud/calls"

valid() { [[ $1 =~ ^[A-Za-z0-9._-]+$ ]] || { echo "bad instance name: $1" >&2; exit 2; }; }

case $verb in
create)
    name=$1 type=$2 label=$3
    valid "$name"
    if [[ -f $cloud/ledger && ${TEST_CLOUD_SKIP_LEDGER:-0} != 1 ]]; then
        state=$(python3 -c 'import sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute("SELECT state FROM instances WHERE name=?", (sys.argv[2],)).fetchone()
print(row[0] if row else "")' "$(cat "$cloud/ledger")" "$name")
        [[ $state == creating ]] || { echo "$name is not in the ledger as creating (it says: '$state')" >&2; exit 3; }
    fi
    dir=$cloud/$name
    mkdir -p "$dir/home"
    echo "$label" > "$dir/label"
    echo "$type" > "$dir/type"
    if [[ $type == unbootable* ]]; then
        echo 1 > "$dir/port" # nothing listens on port 1: ssh is refused until the boot timeout
        echo "$name"
        exit 0
    fi
    ssh-keygen -q -t ed25519 -N "" -f "$dir/hostkey"
    mkdir -p /run/sshd # sshd's privilege-separation folder
    for attempt in 1 2 3; do # the free port found may be taken before sshd binds it
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        cat > "$dir/sshd_config" <<CONFIG
Port $port
ListenAddress 127.0.0.1
HostKey $dir/hostkey
AuthorizedKeysFile $cloud/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PidFile $dir/sshd.pid
StrictModes no
UsePAM no
SetEnv HOME=$dir/home
CONFIG
        if /usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log"; then
            echo "$port" > "$dir/port"
            echo "$name"
            exit 0
        fi
    done
    echo "sshd did not start: $(tail -1 "$dir/sshd.log")" >&2
    exit 1
    ;;
list)
    label=$1
    for dir in "$cloud"/*/; do
        dir=${dir%/}
        [[ -f $dir/label && ! -e $dir/deleted && $(cat "$dir/label") == "$label" ]] && echo "$(basename "$dir") $(cat "$dir/type")"
    done
    exit 0
    ;;
address)
    valid "$1"
    dir=$cloud/$1
    [[ -f $dir/port && ! -e $dir/deleted ]] || { echo "no instance $1" >&2; exit 1; }
    [[ $(cat "$dir/type") == held* && ! -e $cloud/boot ]] && exit 0 # no address yet
    echo "127.0.0.1:$(cat "$dir/port")"
    ;;
delete)
    valid "$1"
    dir=$cloud/$1
    [[ -d $dir ]] || { echo "no instance $1" >&2; exit 1; }
    [[ -e $dir/deleted ]] && exit 0 # gone already: its pid files are stale (their pids may be another's now)
    signal_pid() { # $1: a pid file; $2: the pid's group too
        local pid
        pid=$(cat "$1" 2>/dev/null) || return 0
        [[ $pid =~ ^[0-9]+$ ]] || return 0
        if [[ ${2:-} == group ]]; then kill -KILL -- "-$pid" 2>/dev/null || true; fi
        kill -KILL "$pid" 2>/dev/null || true
    }
    state=$dir/home/.local/share/traindeck/worker
    signal_pid "$state/pid"
    for job in "$state"/jobs/*/pid; do
        [[ -f $job ]] && signal_pid "$job" group
    done
    # sshd and every session it serves (the forwards' connections drop, as a machine's do when it ends).
    kill_tree() {
        local child
        for child in $(pgrep -P "$1" || true); do kill_tree "$child"; done
        kill -KILL "$1" 2>/dev/null || true
    }
    sshd=$(cat "$dir/sshd.pid" 2>/dev/null || true)
    if [[ $sshd =~ ^[0-9]+$ ]]; then kill_tree "$sshd"; fi
    touch "$dir/deleted"
    ;;
*)
    echo "unknown verb $verb" >&2
    exit 2
    ;;
esac
