#pragma once
// Ending a program that cannot go on, on every locality at once (docs/distributed.md, "Faults
// and bad input").
#include <exception>
#include <string>

namespace grain {

// Ends the program now with exit status `status`, on every locality, without waiting for
// tasks or parcels: for an error after which the program cannot go on and must not wait — a
// task of it may wait for a collective, a parcel or an answer that will never come (a rank
// that lacks an action, a rank stopped past the collectives' timeout). `why` is logged as an
// error. This locality's extensions flush as on a fatal signal (the trace and the summary are
// written; a trace of several ranks is left incomplete, saying so); then, with several
// localities, MPI_Abort makes mpirun end every rank with `status`. One locality: the process
// exits with `status`.
[[noreturn]] void abort_job(int status, const std::string& why) noexcept;

// What an application's main does with an error it cannot go on from (the shipped apps all
// do): prints "PROGRAM: error: WHAT" on stderr; then, with several localities, ends the job
// at once (abort_job: the other ranks and tasks waiting on them are not waited for); with one,
// returns `status` for main to return, and the runtime ends as usual.
int fatal_error(const char* program, const std::exception& e, int status = 1) noexcept;

}  // namespace grain
