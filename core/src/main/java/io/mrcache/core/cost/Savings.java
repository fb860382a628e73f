package io.mrcache.core.cost;

import io.mrcache.core.CacheCounter;
import io.mrcache.core.Distribution;
import io.mrcache.core.MetricsSnapshot;
import java.util.ArrayList;
import java.util.List;

/**
 * What caching registrations saves: per message size for a what-if workload, and for a measured run.
 *
 * <p>Per message of {@code n} bytes, without a cache a transport registers and deregisters around every
 * send: {@code T_nocache = T_net(n) + t_reg(n) + t_dereg(n)}. With a cache that hits with ratio {@code h}:
 * {@code T_cache = T_net(n) + t_hit + (1 - h) (t_reg(n) + t_dereg(n))}.
 */
public final class Savings {
    private Savings() {
    }

    /**
     * A what-if workload.
     *
     * @param network           the link
     * @param registration      registration costs
     * @param hitRatio          share of acquires that hit, in [0, 1]
     * @param hitSeconds        cost of one cache hit (acquire + release)
     * @param invalidateSeconds cost of the invalidation a cached buffer's free adds (beyond deregistration)
     */
    public record WhatIf(NetworkModel network, RegistrationCostModel registration, double hitRatio, double hitSeconds,
            double invalidateSeconds) {
        public WhatIf {
            if (!(hitRatio >= 0 && hitRatio <= 1)) {
                throw new IllegalArgumentException("hit ratio must be in [0, 1] (got " + hitRatio + ")");
            }
            if (!(hitSeconds >= 0) || !(invalidateSeconds >= 0)) {
                throw new IllegalArgumentException("hit and invalidate costs must be >= 0 (got " + hitSeconds + ", "
                        + invalidateSeconds + ")");
            }
        }
    }

    /** One message size of the what-if table; times in seconds, bandwidths in bytes per second. */
    public record Row(long bytes, double network, double registration, double withoutCache, double cacheHit,
            double withCache, double saving, double savingShare, double bandwidthWithoutCache,
            double bandwidthWithCache) {
    }

    public static Row row(WhatIf w, long bytes) {
        double net = w.network().messageTime(bytes);
        double reg = w.registration().roundTrip(bytes);
        double without = net + reg;
        double hit = net + w.hitSeconds();
        double with = net + w.hitSeconds() + (1 - w.hitRatio()) * reg;
        double saving = without - with;
        return new Row(bytes, net, reg, without, hit, with, saving, saving / without, bytes / without, bytes / with);
    }

    /** Rows for 4 KiB, 16 KiB, ... up to 4 GiB (powers of four). */
    public static List<Row> table(WhatIf w) {
        List<Row> rows = new ArrayList<>();
        for (long n = 4096; n <= (4L << 30); n *= 4) {
            rows.add(row(w, n));
        }
        return rows;
    }

    /**
     * Uses of one buffer after which caching it costs less than registering per use: a cached buffer pays
     * one registration round trip, {@code t_hit} per use and an invalidation at its free, against one round
     * trip per use without a cache. Returns {@code (rt + t_inv) / (rt - t_hit)}, or infinity when a hit costs
     * as much as a registration.
     */
    public static double breakEvenUses(RegistrationCostModel reg, long bytes, double hitSeconds,
            double invalidateSeconds) {
        double rt = reg.roundTrip(bytes);
        return rt <= hitSeconds ? Double.POSITIVE_INFINITY : (rt + invalidateSeconds) / (rt - hitSeconds);
    }

    /**
     * What a run saved, from its metrics. Hits are taken to have the size distribution of the registrations
     * the run made (the cache keeps no per-hit size histogram, to keep hits free of shared writes).
     *
     * @param registrationsAvoided hits: each would have been a register and a deregister
     * @param secondsSaved         model time of the avoided round trips, less the hits' cost
     * @param communicationSeconds model network time of every acquire's message
     * @param shareSaved           secondsSaved over the no-cache total (network + round trip per acquire)
     * @param predictedRegistrationSeconds model time of the registrations the run made
     * @param measuredRegistrationSeconds  their measured time (the latency histogram)
     */
    public record Run(long registrationsAvoided, double secondsSaved, double communicationSeconds, double shareSaved,
            double predictedRegistrationSeconds, double measuredRegistrationSeconds) {
        /** (predicted - measured) / measured, or NaN without registrations. */
        public double predictionError() {
            return measuredRegistrationSeconds == 0 ? Double.NaN
                    : (predictedRegistrationSeconds - measuredRegistrationSeconds) / measuredRegistrationSeconds;
        }
    }

    public static Run forRun(MetricsSnapshot m, RegistrationCostModel reg, NetworkModel net, double hitSeconds) {
        Distribution sizes = m.registrationBytes();
        long registrations = sizes.count();
        long hits = m.get(CacheCounter.HITS);
        long acquires = hits + m.get(CacheCounter.MISSES);
        double meanRoundTrip = 0;
        double meanNetwork = 0;
        double predicted = 0;
        if (registrations > 0) {
            for (Distribution.Bucket v : sizes.buckets()) {
                double bytes = v.value(); // sizes are page multiples: the bucket floor
                long count = v.count();
                double share = (double) count / registrations;
                meanRoundTrip += share * reg.roundTrip(bytes);
                meanNetwork += share * net.messageTime(bytes);
                predicted += count * reg.register().seconds(bytes);
            }
        }
        double saved = hits * (meanRoundTrip - hitSeconds);
        double communication = acquires * meanNetwork;
        double withoutCache = communication + acquires * meanRoundTrip;
        Distribution nanos = m.registrationNanos();
        double measured = nanos.count() * nanos.mean() / 1e9;
        return new Run(hits, saved, communication, withoutCache == 0 ? 0 : saved / withoutCache, predicted, measured);
    }
}
