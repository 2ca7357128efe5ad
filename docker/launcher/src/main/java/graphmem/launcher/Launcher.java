package graphmem.launcher;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;

/**
 * Runs Neo4j Community through the embedded API with a Bolt connector on loopback,
 * so that graphmem has a real server on machines without Docker.
 *
 * <p>Configuration comes from system properties (set by {@code graphmem server start}):
 * {@code graphmem.home} (data directory, required), {@code graphmem.port} (Bolt port,
 * 7687), {@code graphmem.pagecache} (e.g. 256m), {@code graphmem.tx_timeout} and
 * {@code graphmem.lock_timeout} (seconds; see below). Authentication is off unless the
 * environment variable {@code GRAPHMEM_NEO4J_PASSWORD} is set: then it is on and the
 * {@code neo4j} user gets that password. The password travels in the environment, not
 * on the command line, so that {@code ps} does not show it.
 *
 * <p>Time limits, so that a stalled client cannot freeze the others: a transaction that
 * names no timeout of its own is rolled back after {@code graphmem.tx_timeout} seconds
 * (120; graphmem's own transactions name theirs), a lock wait fails after
 * {@code graphmem.lock_timeout} seconds (20) with a transient error that clients retry,
 * and the server looks for overdue transactions every second (rather than every two).
 * A rolled-back transaction releases its locks at once.
 *
 * <p>The process prints {@code graphmem-launcher: ready} once Bolt answers, and shuts the
 * database down cleanly on SIGTERM (a JVM shutdown hook), releasing its store lock. Bolt
 * closes after the databases have stopped, so its two grace periods (5 s each by
 * default: ten idle seconds in every stop, a bootstrap's swap or a test's restart) are
 * cut to a second: no transaction is left for a connection to finish.
 */
public final class Launcher {
    private Launcher() {}

    public static void main(String[] args) throws Exception {
        String home = System.getProperty("graphmem.home");
        if (home == null || home.isBlank()) {
            System.err.println("graphmem-launcher: -Dgraphmem.home=<data directory> is required");
            System.exit(2);
        }
        Path homeDir = Path.of(home).toAbsolutePath();
        Files.createDirectories(homeDir);
        int port = Integer.parseInt(System.getProperty("graphmem.port", "7687"));
        long pageCache = ByteUnit.parse(System.getProperty("graphmem.pagecache", "256m"));
        Duration txTimeout = seconds("graphmem.tx_timeout", "120");
        Duration lockTimeout = seconds("graphmem.lock_timeout", "20");
        String password = System.getenv("GRAPHMEM_NEO4J_PASSWORD");
        boolean auth = password != null && !password.isEmpty();

        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(homeDir)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .setConfig(HttpConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, auth)
                .setConfig(GraphDatabaseSettings.pagecache_memory, pageCache)
                .setConfig(GraphDatabaseSettings.logs_directory, homeDir.resolve("logs"))
                .setConfig(GraphDatabaseSettings.transaction_timeout, txTimeout)
                .setConfig(GraphDatabaseSettings.lock_acquisition_timeout, lockTimeout)
                .setConfig(GraphDatabaseSettings.transaction_monitor_check_interval, Duration.ofSeconds(1))
                .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofSeconds(1))
                .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofSeconds(1))
                .build();

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("graphmem-launcher: shutting down");
            dbms.shutdown();
            stopped.countDown();
        }, "graphmem-shutdown"));

        if (auth) {
            dbms.database("system").executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $pw CHANGE NOT REQUIRED", Map.of("pw", password));
        }
        System.out.println("graphmem-launcher: ready on bolt://127.0.0.1:" + port + " (auth "
                + (auth ? "on" : "off") + ", data " + homeDir + ")");
        System.out.flush();
        stopped.await();
    }

    /** A duration given in (possibly fractional) seconds by system property {@code name}. */
    private static Duration seconds(String name, String fallback) {
        String text = System.getProperty(name, fallback);
        try {
            double value = Double.parseDouble(text);
            if (value < 0 || Double.isNaN(value) || Double.isInfinite(value)) {
                throw new NumberFormatException("negative or not finite");
            }
            return Duration.ofMillis(Math.round(value * 1000));
        } catch (NumberFormatException e) {
            System.err.println("graphmem-launcher: -D" + name + " must be seconds >= 0, got " + text);
            System.exit(2);
            throw new IllegalStateException("unreachable");
        }
    }
}
