from escov.llm.cli import main

raise SystemExit(main())
