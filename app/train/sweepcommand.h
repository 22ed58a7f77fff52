#pragma once
// traindeck-train sweep …: start or follow a sweep on a worker (sweepcommand.cpp has the usage).
namespace traindeck::app {

int run_sweep(int argc, char** argv);

} // namespace traindeck::app
