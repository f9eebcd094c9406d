from denpex.cli import main

raise SystemExit(main())
