package weir.lab

import weir.cli.EveryCommandSuite

/**
 * The dialect's checks over every command `./weir` runs from the lab's jar: the experiments, `compare`,
 * the operator's commands and `train`, taken from the lab's own registry ([[Main.commands]]).
 */
class CommandsSuite extends EveryCommandSuite(Main.commands)
