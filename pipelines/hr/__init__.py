"""HR reverse sync: validate HR CSV exports, plan their changes against the warehouse, apply them through
E1 and E3 with a journal. Modules, in the order data flows through them:

``mapping`` (the TOML column mapping) → ``csv_input`` (reading files) → ``rows`` (field rules) →
``resolve`` (matching and references) → ``identity`` (a match is the person only with evidence beyond
the key) → ``graph`` (org-graph rules) → ``validate`` (the whole upload) →
``snapshot`` (the warehouse's view) → ``plan`` (the diff) → ``thresholds`` → ``warehouse.hr_store``
(plans and the journal in DuckDB) → ``apply``; ``workflow`` runs the steps, ``cli``, ``dagster`` and
``report``/``exports`` show them, ``demo_export`` writes the demo and benchmark inputs.
"""
