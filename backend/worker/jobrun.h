#pragma once
// What the worker knows of a job's current run, whichever executor runs it: the shim's pid (a local process
// group, stored in the jobs table) or the cluster's id for it (stored in the job's folder), and what the
// executor has seen of its end.
#include <string>

#include <sys/types.h>

namespace traindeck::worker {

struct JobRun {
    pid_t shim = -1;              // local: the shim, whose process group is the job
    bool shim_reaped = false;     // local: our child shim exited; its exit_status.json is there to read
    bool adopted = false;         // local: the shim is not our child (re-adopted after a worker restart)
    std::string cluster_id;       // cluster: the batch job running this run
    double cluster_gone_since = 0; // cluster: when the cluster stopped listing it as active
};

} // namespace traindeck::worker
