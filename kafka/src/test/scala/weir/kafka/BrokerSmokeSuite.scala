package weir.kafka

import munit.CatsEffectSuite

class BrokerSmokeSuite extends CatsEffectSuite:
  test("the in-process broker starts and takes records") {
    for
      t <- TestBroker.topic(1)
      _ <- TestBroker.produce(t, List((0, "k", "v")))
    yield ()
  }
