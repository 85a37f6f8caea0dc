package weir.lab

/** The experiments behind `./weir lab <name>`: add an experiment by adding it to [[all]]. */
object Experiments:

  val all: Vector[Experiment] = Vector(
    weir.lab.compare.Compare,
    weir.lab.channels.Channels,
    weir.lab.requests.Serve,
    weir.lab.requests.Requests,
    weir.lab.blocking.Blocking,
    weir.lab.trampoline.Trampoline,
    weir.lab.adaptive.AdaptiveLab,
    weir.lab.durable.DurableLab,
    weir.lab.console.ConsoleLab,
    weir.lab.kafka.KafkaLab,
    weir.lab.soak.SoakLab,
    Heap,
    Example
  )
