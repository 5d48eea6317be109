"""Session repair: classify damaged session files, rebuild what can be rebuilt, quarantine everything else."""

from qwenmem.core.repair.classes import CLASSES
from qwenmem.core.repair.diagnose import Diagnosis, diagnose
from qwenmem.core.repair.run import CHECK, DRY_RUN, REPAIR, FileReport, RepairRun, run_repair

__all__ = ["CLASSES", "CHECK", "DRY_RUN", "REPAIR", "Diagnosis", "FileReport", "RepairRun", "diagnose", "run_repair"]
