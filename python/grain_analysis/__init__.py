"""grain's outputs as pandas DataFrames: traces (read_trace), run summaries (read_summary),
counter CSV files (read_counters_csv). See docs/python.md in grain's source tree."""
from ._reader import TraceError, find_reader
from .analysis import compare, decision_effects, decision_that_mattered, step_times
from .files import RunSummary, counters_wide, read_counters_csv, read_summary
from .summary import Summary, aggregate, summarise
from .trace import Trace, read_trace

__version__ = "0.1.0"
__all__ = ["Trace", "TraceError", "read_trace", "find_reader", "Summary", "summarise",
           "aggregate", "RunSummary", "read_summary", "read_counters_csv", "counters_wide",
           "decision_effects", "decision_that_mattered", "step_times", "compare"]
