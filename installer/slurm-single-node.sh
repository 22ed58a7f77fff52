#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for trying TrainDeck's Slurm executor (and for its tests).
# No systemd: munged, slurmctld, slurmd and slurmrestd are started by hand. Needs root and the packages
# installer/install-deps.sh installs (slurmctld slurmd slurm-client slurmrestd munge slurm-wlm-jwt-plugin).
#
#   installer/slurm-single-node.sh start DIR [CPUS]   configure in DIR and start; prints the settings to use
#   installer/slurm-single-node.sh stop DIR           cancel its jobs and stop its daemons
#
# DIR/slurm.conf is the cluster's configuration (export SLURM_CONF=DIR/slurm.conf for sbatch/squeue/scancel),
# DIR/jwt.token a JWT for root (slurmrestd on 127.0.0.1:$SLURMRESTD_PORT, default 6820), DIR/env both as shell lines.
# Facts behind the choices: ../shared/notes/SLURM.md.
set -euo pipefail

command="${1:-}"
dir="${2:-}"
if [ -z "$command" ] || [ -z "$dir" ]; then
  echo "usage: $0 start|stop DIR [CPUS]" >&2
  exit 2
fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
chmod 0755 "$dir"
conf="$dir/slurm.conf"
rest_port="${SLURMRESTD_PORT:-6820}"
ctld_port="${SLURMCTLD_PORT:-6817}"
slurmd_port="${SLURMD_PORT:-6818}"

stop_pid() {
  local file="$1"
  if [ -f "$file" ]; then
    local pid
    pid="$(cat "$file")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$file"
  fi
}

if [ "$command" = stop ]; then
  if [ -f "$conf" ]; then
    SLURM_CONF="$conf" scancel --full --signal=KILL --user=root 2>/dev/null || true
    SLURM_CONF="$conf" scancel --user=root 2>/dev/null || true
    sleep 1
  fi
  stop_pid "$dir/slurmrestd.pid"
  stop_pid "$dir/slurmd.pid"
  stop_pid "$dir/slurmctld.pid"
  # slurmstepd outlives slurmd; end what is left of this cluster's jobs.
  pkill -KILL -f "slurmstepd.*$dir" 2>/dev/null || true
  echo "slurm-single-node: stopped ($dir)"
  exit 0
fi
[ "$command" = start ] || { echo "usage: $0 start|stop DIR [CPUS]" >&2; exit 2; }

for program in munged slurmctld slurmd slurmrestd sbatch scontrol; do
  command -v "$program" >/dev/null || { echo "slurm-single-node: $program is missing; run installer/install-deps.sh --tests" >&2; exit 1; }
done

# munge: one key and one daemon for the machine.
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key
chmod 0600 /etc/munge/munge.key
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge
if ! pgrep -x munged >/dev/null; then
  setpriv --reuid=munge --regid=munge --init-groups munged --pid-file=/run/munge/munged.pid
fi

# A user for slurmrestd, which refuses to run as root.
id traindeck-rest >/dev/null 2>&1 || useradd -r -M -s /usr/sbin/nologin traindeck-rest

read -r cpus memory < <(slurmd -C | awk '/NodeName/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "CPUs") c = kv[2]; if (kv[1] == "RealMemory") m = kv[2] } print c, m }')
cpus="${3:-$cpus}"
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
head -c 32 /dev/urandom | base64 > "$dir/jwt.key" 2>/dev/null || true
[ -s "$dir/jwt.key" ] || dd if=/dev/urandom of="$dir/jwt.key" bs=32 count=1 status=none
chmod 0600 "$dir/jwt.key"
cat > "$conf" <<CONF
ClusterName=traindeck
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$dir/jwt.key
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
MpiDefault=none
ReturnToService=2
MinJobAge=3600
EnforcePartLimits=ALL
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
chmod 0644 "$conf"

export SLURM_CONF="$conf"
if ! { [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; }; then
  slurmctld -f "$conf"
fi
if ! { [ -f "$dir/slurmd.pid" ] && kill -0 "$(cat "$dir/slurmd.pid")" 2>/dev/null; }; then
  slurmd -f "$conf" -N localhost
fi
for _ in $(seq 100); do
  if sinfo -h -o '%t' 2>/dev/null | grep -qE 'idle|mix|alloc'; then break; fi
  sleep 0.2
done
sinfo -h -o '%t' | grep -qE 'idle|mix|alloc' || { echo "slurm-single-node: the node did not come up; see $dir/log" >&2; exit 1; }

if ! setpriv --reuid=traindeck-rest --regid=traindeck-rest --clear-groups test -r "$conf"; then
  echo "slurm-single-node: slurmrestd runs as user traindeck-rest, which cannot read $conf; make its folders world-searchable" >&2
  exit 1
fi
if ! { [ -f "$dir/slurmrestd.pid" ] && kill -0 "$(cat "$dir/slurmrestd.pid")" 2>/dev/null; }; then
  chmod 0755 "$dir"
  SLURM_JWT=daemon setpriv --reuid=traindeck-rest --regid=traindeck-rest --clear-groups \
    slurmrestd -f "$conf" -a rest_auth/jwt -s openapi/v0.0.38 "127.0.0.1:$rest_port" > "$dir/log/slurmrestd.log" 2>&1 &
  echo $! > "$dir/slurmrestd.pid"
fi
token="$(scontrol token username=root lifespan=86400 | sed -n 's/^SLURM_JWT=//p')"
printf '%s\n' "$token" > "$dir/jwt.token"
chmod 0600 "$dir/jwt.token"
for _ in $(seq 100); do
  if curl -s -o /dev/null -w '%{http_code}' -H "X-SLURM-USER-NAME: root" -H "X-SLURM-USER-TOKEN: $token" \
       "http://127.0.0.1:$rest_port/slurm/v0.0.38/ping" | grep -q 200; then break; fi
  sleep 0.1
done
cat > "$dir/env" <<ENV
SLURM_CONF=$conf
TRAINDECK_SLURM_REST=http://127.0.0.1:$rest_port
TRAINDECK_SLURM_TOKEN_FILE=$dir/jwt.token
TRAINDECK_SLURM_USER=root
ENV
echo "slurm-single-node: up ($cpus CPUs, partition debug). Settings in $dir/env:"
cat "$dir/env"
echo "Run a worker on it: traindeck-worker --executor slurm --slurm-conf $conf --slurm-rest http://127.0.0.1:$rest_port --slurm-token-file $dir/jwt.token --slurm-user root"
