// Several samples of one prompt (GenerateRequest.n): the request becomes n jobs, alike but for
// the seed, each accepted, stored and dispatched like any other job. This file holds what makes
// choice i out of the request's first job, and the watch of all n at once that Generate and the
// HTTP API stream from.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/util/status.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler {

class SchedulerCore;

// Choice `index`'s stored job: `first` (choice 0's) with params.seed + index, in what runs and
// in what its acceptance reports.
v1::StoredJob ChoiceJob(const v1::StoredJob& first, int index);

// Choice `index`'s idempotency key: the request's own for choice 0, "<key> choice <index>" for
// the others (with a space, which no client's key has, so no request's key can take it); no key
// stays no key. A retried request with the same key and n finds the same n jobs.
std::string ChoiceIdempotencyKey(const std::string& key, int index);

// The job of every choice of an accepted request, by index: accepted.job_ids, or the one job.
std::vector<std::string> ChoiceJobIds(const v1::SubmitResponse& submitted);

// SchedulerCore::Watch over every choice of `submitted` at once: `emit` gets each job's events
// on the caller's thread as they come, each with its JobEvent.index (and each acceptance with
// the job ids of all choices), until every job has ended, `emit` returns false or `stop()` says
// so (CANCELLED, as Watch). A choice whose watch fails (the job store) ends with a failed event
// of its own; the others go on. With one choice this is Watch itself.
Status WatchChoices(SchedulerCore& core, const v1::SubmitResponse& submitted,
                    const std::function<bool(const v1::JobEvent&)>& emit, const std::function<bool()>& stop);

}  // namespace unmask::scheduler
