"""Performance runs against peers and bounds (``make bench``); not part of the test run."""
