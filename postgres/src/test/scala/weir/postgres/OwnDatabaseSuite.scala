package weir.postgres

import munit.FunSuite

class OwnDatabaseSuite extends FunSuite:

  test("a database of its own keeps the URL's user, password, host, port and parameters") {
    assertEquals(
      OwnDatabase.withDatabase("postgresql://postgres:weir@127.0.0.1:5432/postgres", "own"),
      "postgresql://postgres:weir@127.0.0.1:5432/own"
    )
    assertEquals(
      OwnDatabase.withDatabase("postgres://u@db.example/app?sslmode=require", "own"),
      "postgres://u@db.example/own?sslmode=require"
    )
    assertEquals(
      OwnDatabase.withDatabase("jdbc:postgresql://localhost:41234/postgres?user=postgres&password=x", "own"),
      "jdbc:postgresql://localhost:41234/own?user=postgres&password=x"
    )
    assertEquals(OwnDatabase.withDatabase("postgresql://h:1", "own"), "postgresql://h:1/own")
  }

  test("a URL without a host is refused, naming it without its password") {
    val e = intercept[IllegalArgumentException](OwnDatabase.withDatabase("jdbc:postgresql:mydb", "own"))
    assert(e.getMessage.contains("jdbc:postgresql:mydb"), e.getMessage)
  }
