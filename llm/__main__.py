from llm.cli import main

raise SystemExit(main())
