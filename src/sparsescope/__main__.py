from sparsescope.cli import main

raise SystemExit(main())
