package weir.lab

object Main:
  def main(args: Array[String]): Unit = println("weir lab")
