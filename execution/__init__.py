"""The execution engine: runs contestants' recipes in a sandbox and scores what they return.

Worker-only and Django-free. The web process imports none of it (an import contract in
the test suite checks this): uploads are validated with :mod:`evaluation.recipes`, which
reads a recipe without running it.

- :mod:`execution.run`: one run end to end (``execute_recipe_run``);
- :mod:`execution.scoring_program`: a host's scoring program, run in the sandbox (docs/scoring-programs.md);
- :mod:`execution.workspace`: the files a run receives; :mod:`execution.outputs`: what it returns;
- :mod:`execution.runners`: where a workspace runs (this process's sandbox or a runner service);
- :mod:`execution.sandbox`: the isolation;
- :mod:`execution.harness`: the program that runs inside the sandbox;
- :mod:`execution.devices`: GPU pinning of a worker's pool processes.
"""
