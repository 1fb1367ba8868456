from coordinator.cli import main
from inference.process_exit import exit_after

exit_after(main)
