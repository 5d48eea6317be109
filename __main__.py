"""`python -m qwenmem` run from the folder that holds a clone named `qwenmem`.

There, Python finds this repository folder first and takes it for a `qwenmem` namespace package, so the real
package inside it (qwenmem/qwenmem/) was shadowed and `python -m qwenmem --version` failed with an ImportError.
Python then runs this file as `qwenmem.__main__`: it puts the repository first on sys.path, forgets the namespace
package and runs the real entry point. Anywhere else this file is never imported.
"""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
for _name in [m for m in sys.modules if m == "qwenmem" or m.startswith("qwenmem.")]:
    del sys.modules[_name]

from qwenmem.cli.entry import main  # noqa: E402

main()
