"""The ``embedis-server`` console script: redis-server's command line, served by this
package's extension in a process of its own (``embedis-server --port auto`` prints
``port=<n>`` once it listens)."""

import sys

from embedis._embedis import serve


def main() -> None:
    sys.exit(serve(sys.argv[1:]))


if __name__ == "__main__":
    main()
