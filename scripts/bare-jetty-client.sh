#!/usr/bin/env bash
# The floor under the request lab's cold client (docs/lab/requests.md, "A cold client: the floor"): the
# same Jetty HttpClient settings and connection handling as the lab's client, driven by plain Java
# callbacks (no Cats Effect, no fibers, no weir), in a fresh JVM started like the lab's, with its
# ahead-of-time cache. Sends GET /0 .. /N-1 to a running delay server with CONCURRENCY in flight and prints
# the makespan (first request to last answer) beside the ideal schedule's.
#   ./weir lab serve --port 8000 --max-delay 1000ms &
#   scripts/bare-jetty-client.sh http://127.0.0.1:8000 [N] [CONCURRENCY] [MAX_DELAY_MS] [SEED]
#   (defaults 20000 2000 1000 0: the server's --max-delay and --seed must match)
set -euo pipefail
url=${1:?usage: scripts/bare-jetty-client.sh URL [N] [CONCURRENCY] [MAX_DELAY_MS] [SEED]}
n=${2:-20000} concurrency=${3:-2000} max_delay=${4:-1000} seed=${5:-0}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/select-jdk.sh"
cd "$root"
jar=lab/target/weir-lab.jar
[ -f "$jar" ] || { echo "no $jar: run any ./weir lab command first (it builds the jar and its cache)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

cat >"$dir/BareJettyClient.java" <<'JAVA'
import org.eclipse.jetty.client.*;
import org.eclipse.jetty.util.Promise;
import org.eclipse.jetty.util.thread.*;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;

public class BareJettyClient {
  static HttpClient client; static Destination destination; static String host; static int port;
  static long n; static int concurrency;
  static final ConcurrentLinkedDeque<Connection> idle = new ConcurrentLinkedDeque<>();
  static final ConcurrentLinkedQueue<Long> toOpen = new ConcurrentLinkedQueue<>();
  static final AtomicInteger connecting = new AtomicInteger();
  static final AtomicLong next = new AtomicLong(), done = new AtomicLong();
  static final CountDownLatch finished = new CountDownLatch(1);
  static volatile Throwable failure;

  public static void main(String[] args) throws Exception {
    java.net.URI base = java.net.URI.create(args[0]);
    host = base.getHost(); port = base.getPort();
    n = Long.parseLong(args[1]); concurrency = Integer.parseInt(args[2]);
    long maxDelay = Long.parseLong(args[3]), seed = Long.parseLong(args[4]);
    QueuedThreadPool threads = new QueuedThreadPool(8, 2);
    threads.setDaemon(true);
    client = new HttpClient();
    client.setExecutor(threads);
    client.setMaxConnectionsPerDestination(concurrency);
    client.setConnectTimeout(30000); client.setIdleTimeout(60000);
    client.setFollowRedirects(false); client.setUserAgentField(null);
    client.getHttpClientTransport().setInvocationType(Invocable.InvocationType.NON_BLOCKING);
    client.start();
    destination = client.resolveDestination(client.newRequest(args[0]));
    long cpu0 = ProcessHandle.current().info().totalCpuDuration().orElseThrow().toNanos();
    long t0 = System.nanoTime();
    for (int i = 0; i < concurrency; i++) next();
    finished.await();
    long t1 = System.nanoTime();
    long cpu1 = ProcessHandle.current().info().totalCpuDuration().orElseThrow().toNanos();
    if (failure != null) { System.err.println("bare Jetty client: " + args[0] + ": " + failure); System.exit(1); }
    double ideal = weir.lab.requests.RequestIdeal.ofServer(n, concurrency, seed, maxDelay).makespanMs() / 1e3;
    System.out.printf("bare Jetty client: %d requests, concurrency %d: makespan %.3f s, ideal %.3f s, ratio %.4f, CPU %.2f s%n",
        n, concurrency, (t1 - t0) / 1e9, ideal, (t1 - t0) / 1e9 / ideal, (cpu1 - cpu0) / 1e9);
    client.stop();
  }

  /** Sends the next id, if any are left. */
  static void next() {
    long id = next.getAndIncrement();
    if (id < n) send(id);
  }

  /** On an idle connection, or on a new one (at most 512 connects at once, as the lab's client). */
  static void send(long id) {
    Connection connection;
    while ((connection = idle.poll()) != null && connection.isClosed()) {}
    if (connection == null) { toOpen.add(id); open(); return; }
    Connection c = connection;
    Request request = client.newRequest(host, port).path("/" + id).timeout(30000, TimeUnit.MILLISECONDS);
    c.send(request, new BufferingResponseListener(1024) {
      @Override public void onComplete(Result result) {
        if (result.isSucceeded() && !c.isClosed()) idle.push(c); else c.close();
        if (result.isFailed()) fail(result.getFailure());
        else if (result.getResponse().getStatus() != 200 || !getContentAsString(StandardCharsets.UTF_8).trim().equals(Long.toString(id)))
          fail(new IllegalStateException("request " + id + " answered " + result.getResponse().getStatus()));
        else if (done.incrementAndGet() == n) finished.countDown();
        else next();
      }
    });
  }

  static void open() {
    while (connecting.get() < 512) {
      Long id = toOpen.poll();
      if (id == null) return;
      connecting.incrementAndGet();
      destination.newConnection(new Promise<Connection>() {
        @Override public void succeeded(Connection c) { idle.push(c); connecting.decrementAndGet(); send(id); open(); }
        @Override public void failed(Throwable e) { fail(e); }
      });
    }
  }

  static void fail(Throwable e) { failure = e; finished.countDown(); }
}
JAVA
javac -nowarn -cp "$jar" -d "$dir" "$dir/BareJettyClient.java"
aot=()
if [ -f lab/target/weir-lab.aot ]; then aot=(-XX:AOTCache=lab/target/weir-lab.aot "-Xlog:aot*=off" "-Xlog:aot*=error:stderr"); fi
# the launcher's flags: the cache is used only by a JVM started with the flags it was recorded with
java --sun-misc-unsafe-memory-access=allow --enable-native-access=ALL-UNNAMED "${aot[@]}" ${JAVA_OPTS:-} \
  -cp "$jar:$dir" BareJettyClient "$url" "$n" "$concurrency" "$max_delay" "$seed"
