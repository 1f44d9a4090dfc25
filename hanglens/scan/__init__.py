"""Batch-scan archives of job logs: discover jobs, analyse each (pool or dask), write a fleet table."""

from __future__ import annotations

from hanglens.scan.discover import Discovery, Job, Skip, discover
from hanglens.scan.run import ScanSummary, jobs_frame, scan
from hanglens.scan.task import COLUMNS

__all__ = ["COLUMNS", "Discovery", "Job", "ScanSummary", "Skip", "discover", "jobs_frame", "scan"]
