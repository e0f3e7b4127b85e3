"""A Dask worker preload that ends its worker process at once, as a worker killed while the
cluster starts (``test_cluster``: "Nanny failed to start"). Never import it in a test process."""

import os

os._exit(1)
