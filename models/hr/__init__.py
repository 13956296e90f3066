"""The HR reverse sync's own vocabulary, below every layer that uses it: the fields it compares and their
values, the kinds of change, safety thresholds, plans and their statuses. The planner (`pipelines.hr`)
makes these and the store (`warehouse.hr_store`) keeps them; neither imports the other."""
