// The CLI's subcommands. Each parses its own flags (argv from the subcommand on) and returns the
// process exit code (connection.h: 0 ok, 2 usage, 3 connection failure, 4 server error).
#pragma once

namespace longqa::cli {

int RunAsk(int argc, char** argv);
int RunBatch(int argc, char** argv);
int RunEval(int argc, char** argv);
int RunBench(int argc, char** argv);
int RunHealth(int argc, char** argv);
int RunInfo(int argc, char** argv);

}  // namespace longqa::cli
