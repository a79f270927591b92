import sys

try:
    from roofline.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line itself is imported
    print("roofline: interrupted", file=sys.stderr)
    raise SystemExit(130)

raise SystemExit(main())
