package cats.effect.unsafe

import java.io.InputStream
import java.net.JarURLConnection
import java.security.MessageDigest
import scala.util.{Try, Using}

/**
 * Which Cats Effect release is on the class path, for [[PatientSelectorSystem.orDefault]].
 *
 * The jar Cats Effect publishes names its release in its manifest (`Implementation-Version`, beside
 * `Implementation-Title: cats-effect`). A fat jar (maven-shade, sbt-assembly) keeps one manifest, usually
 * the application's own, and loses that line: there the release is recognised by the bytes of the classes
 * whose package-private protocol the patch depends on, against the releases it was checked on. Anything
 * else is unknown (`None`), which the caller treats as another release.
 */
private[unsafe] object CatsEffectVersion:

  /** The classes whose internals [[PatientSelectorSystem]] reads or relies on, as class-path resources. */
  private[unsafe] val Watched = List(
    "cats/effect/unsafe/WorkerThread.class",
    "cats/effect/unsafe/WorkStealingThreadPool.class",
    "cats/effect/unsafe/ParkedSignal.class"
  )

  /** SHA-256 of the [[Watched]] class files, concatenated in that order, in the release's published jar. */
  private val Fingerprints: Map[String, String] = Map(
    "7f404df116344d0b33eb2c434833853fb4ce1b455d1f92a4cba9591cb7e2b2f6" -> "3.7.1"
  )

  /** The release that `loader` (by default the one that loaded Cats Effect) finds, if it is known. */
  def onClassPath(loader: ClassLoader = classOf[WorkerThread[?]].getClassLoader): Option[String] =
    fromManifest(loader).orElse(fromFingerprint(loader))

  // The manifest of the jar that holds `WorkerThread`, read from that jar: `Package` would not do, since
  // this module puts classes of its own in the same package and whichever loads first defines it.
  private[unsafe] def fromManifest(loader: ClassLoader): Option[String] =
    Option(loader.getResource(Watched.head))
      .flatMap(url => Try(url.openConnection()).toOption)
      .collect { case jar: JarURLConnection => jar }
      .flatMap(jar => Try(Option(jar.getManifest)).toOption.flatten)
      .map(_.getMainAttributes)
      .filter(_.getValue("Implementation-Title") == "cats-effect")
      .flatMap(attributes => Option(attributes.getValue("Implementation-Version")))

  private[unsafe] def fromFingerprint(loader: ClassLoader): Option[String] =
    val digest = MessageDigest.getInstance("SHA-256")
    val complete = Watched.forall { name =>
      Option(loader.getResourceAsStream(name)).exists { in =>
        Using.resource(in)((s: InputStream) => digest.update(s.readAllBytes()))
        true
      }
    }
    Option.when(complete)(digest.digest().map(b => f"${b & 0xff}%02x").mkString).flatMap(Fingerprints.get)
