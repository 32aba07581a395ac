"""Per-instance results produced elsewhere, read into one table of models x instances.

A results-only challenge compares models that were run outside varboard (a public LLM
leaderboard's submissions, a paper's released predictions). What makes a fair
comparison possible is the *per-instance* outcome of every model on the same instances:
then pairs are compared example by example (exact McNemar for 0/1 outcomes) as
prediction entries are. Three formats are read, bytes in, :class:`ImportedResults` out:

* ``"csv"``: a generic CSV with one row per model and instance: ``model``,
  ``instance_id`` and ``score`` (a number within ±1e18) or ``correct`` (0/1, true/false);
* ``"lm-eval-jsonl"``: the per-sample log of EleutherAI's lm-evaluation-harness
  (``--log_samples``: one JSON object per line with ``doc_id`` and the metric, e.g.
  ``"acc": 1.0``), one file per model;
* ``"solved-ids"``: the instance ids one model solved (a JSON list, ``{"resolved":
  [...]}`` as SWE-bench reports them, or one id per line), against the list of all
  instances.

:func:`combine` aligns several parts on the instance ids. Every problem raises
:class:`ResultsImportError` (a ``ValueError``) naming the file, the line or row and the field.
"""

from evaluation.imports.formats import (
    FORMATS,
    ImportedResults,
    ResultsImportError,
    combine,
    read_csv_results,
    read_lm_eval_samples,
    read_results,
    read_solved_ids,
)

__all__ = [
    "FORMATS",
    "ImportedResults",
    "ResultsImportError",
    "combine",
    "read_csv_results",
    "read_lm_eval_samples",
    "read_results",
    "read_solved_ids",
]
