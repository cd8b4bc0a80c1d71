from ddssp.cli import main

raise SystemExit(main())
