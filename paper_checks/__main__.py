from escov.paper_checks.cli import main

raise SystemExit(main())
