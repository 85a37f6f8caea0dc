package weir.cli

/** The dialect's checks over every command of the operator's jar. */
class CliCommandsSuite extends EveryCommandSuite(Main.commands)
