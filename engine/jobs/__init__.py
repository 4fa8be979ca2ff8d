"""Runs that outlive the terminal that started them.

    journal.py    EventJournal: every event of a job into the store's `events` table, from a
                  writer thread; EventTail / read_events: them back, typed, from any process;
                  catch_up: a job's events so far, thinned for a follower that arrives late
    activity.py   job_activity: what a running job is doing now, and whether it waits for approval
    codec.py      an event as (type name, JSON) and back
    registry.py   JobRegistry: the `runner_jobs` table (running, done, failed, stopped, interrupted);
                  prune_journals: the events of all but the newest finished jobs
    runner.py     spawn (a command as a detached job), JobRun (the job's side, detached or in the
                  foreground: registration, journal, SIGTERM as a clean stop, the outcome),
                  request_stop, wait_ended

The tables are the store's (schema v8, engine/store/schema.py); engine.api is the door to all of it.
"""

from engine.jobs.activity import JobActivity, job_activity
from engine.jobs.codec import EVENT_TYPES, UnknownEvent, decode, encode
from engine.jobs.journal import CatchUp, EventJournal, EventTail, JournalEntry, catch_up, read_events
from engine.jobs.registry import JOB_STATUSES, JobRegistry, JobStatus, Pruned, RunnerJob, UnknownJob
from engine.jobs.runner import JOB_ENV, JobRun, job_log, new_job_id, request_stop, spawn, wait_ended

__all__ = [
    "EVENT_TYPES",
    "CatchUp",
    "JOB_ENV",
    "JOB_STATUSES",
    "EventJournal",
    "EventTail",
    "JobRegistry",
    "JobActivity",
    "JobRun",
    "JobStatus",
    "JournalEntry",
    "Pruned",
    "RunnerJob",
    "UnknownEvent",
    "UnknownJob",
    "catch_up",
    "decode",
    "encode",
    "job_activity",
    "job_log",
    "new_job_id",
    "read_events",
    "request_stop",
    "spawn",
    "wait_ended",
]
