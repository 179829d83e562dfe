// Reads a single-partition topic of Debezium change events written with
// message.timestamp.type=LogAppendTime and reports, per record, commit -> broker append latency:
// the record's timestamp (the broker's LogAppendTime, ms) minus the transaction's commit time in
// the event's source block (source.ts_us, or source.ts_ms * 1000 when ts_us is absent). The
// envelope's own ts_us (when the connector made the event) splits it into two legs: commit ->
// connector and connector -> broker append. Used by scripts/bench-latency.sh.
//
// Run with the broker's own jars (compiled once by the bench):
//   java -cp "target/bench/latency-classes:target/services/kafka/lib/*" LatencyReport \
//     <bootstrap.servers> <topic> <first offset> <cutoff epoch us> <burst ms> <out dir> [<partition dir>]
//   first offset   records before it are skipped (the bench's probe record is offset 0)
//   cutoff         records committed before it are warm-up: counted, left out of the percentiles
//   burst ms       a one-second window (by commit time) whose max latency exceeds this is a burst
//   out dir        per-second.tsv (every second: records, p50, p99, max, records over the burst
//                  threshold) and slow-records.tsv (the records over the threshold, at most the
//                  first 100 of each second) are written here
//   partition dir  optional: the broker's directory of partition 0 (<log.dirs>/<topic>-0); its
//                  segment files are read (batch headers only) to count record batches, i.e.
//                  produce requests for a single-partition topic, and to date segment rolls
// Prints one JSON object on stdout (percentiles are nearest-rank; the append time has millisecond
// resolution, so a latency can read up to 1 ms low, even below zero). Exit status 0 (the bench
// checks the counts), 1 on error (a record whose timestamp is not LogAppendTime, or whose commit
// time cannot be found).

import java.io.File;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class LatencyReport {
    static final byte[] PAYLOAD = "\"payload\":".getBytes(StandardCharsets.US_ASCII);
    static final byte[] SOURCE = "\"source\":{".getBytes(StandardCharsets.US_ASCII);
    static final byte[] TS_US = "\"ts_us\":".getBytes(StandardCharsets.US_ASCII);
    static final byte[] TS_MS = "\"ts_ms\":".getBytes(StandardCharsets.US_ASCII);
    static final byte[] AFTER_ID = "\"after\":{\"id\":".getBytes(StandardCharsets.US_ASCII);

    // Per record, in offset order.
    static long[] offset = new long[1 << 16];
    static long[] commitUs = new long[1 << 16];
    static long[] appendMs = new long[1 << 16];
    static long[] envelopeUs = new long[1 << 16];   // the envelope's ts_us: when the connector made the event
    static int n = 0;

    public static void main(String[] args) throws Exception {
        if (args.length < 6) {
            System.err.println("usage: LatencyReport <bootstrap.servers> <topic> <first offset> <cutoff epoch us> <burst ms> <out dir> [<partition dir>]");
            System.exit(2);
        }
        String topic = args[1];
        long first = Long.parseLong(args[2]);
        long cutoffUs = Long.parseLong(args[3]);
        double burstMs = Double.parseDouble(args[4]);
        File outDir = new File(args[5]);
        File partDir = args.length > 6 ? new File(args[6]) : null;

        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
        p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, String.valueOf(64 << 20));
        p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, String.valueOf(32 << 20));
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "bench-latency-report");

        long keyBytes = 0, valueBytes = 0;
        long tombstones = 0, notLogAppend = 0, noCommitTs = 0, fromTsMs = 0;
        long minId = Long.MAX_VALUE, maxId = Long.MIN_VALUE, noId = 0;
        BitSet ids = new BitSet();
        long dupIds = 0;
        long end;
        long deadline = System.nanoTime() + Duration.ofMinutes(20).toNanos();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<PartitionInfo> parts = c.partitionsFor(topic, Duration.ofSeconds(60));
            if (parts == null || parts.size() != 1) {
                System.err.println("LatencyReport: " + topic + " must have exactly one partition, has " + (parts == null ? 0 : parts.size()));
                System.exit(1);
            }
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            end = c.endOffsets(List.of(tp), Duration.ofSeconds(60)).get(tp);
            c.seek(tp, first);
            while (c.position(tp, Duration.ofSeconds(60)) < end) {
                if (System.nanoTime() > deadline) {
                    System.err.println("LatencyReport: not at the end offset " + end + " after 20 minutes");
                    System.exit(1);
                }
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    if (r.offset() >= end) break;
                    byte[] v = r.value();
                    if (v == null) { tombstones++; continue; }
                    valueBytes += v.length;
                    keyBytes += r.key() == null ? 0 : r.key().length;
                    if (r.timestampType() != TimestampType.LOG_APPEND_TIME) notLogAppend++;
                    long[] ts = commitTimeUs(v);
                    if (ts == null) { noCommitTs++; continue; }
                    if (ts[1] != 0) fromTsMs++;
                    long id = idOf(v);
                    if (id == Long.MIN_VALUE || id < 0 || id > Integer.MAX_VALUE) {
                        noId++;
                    } else {
                        if (ids.get((int) id)) dupIds++;
                        ids.set((int) id);
                        minId = Math.min(minId, id);
                        maxId = Math.max(maxId, id);
                    }
                    add(r.offset(), ts[0], r.timestamp(), ts[2]);
                }
            }
        }
        if (notLogAppend > 0 || noCommitTs > 0) {
            System.err.println("LatencyReport: " + notLogAppend + " records without LogAppendTime, "
                    + noCommitTs + " without source.ts_us/ts_ms");
            System.exit(1);
        }

        // Latency of every record in microseconds (the append time has millisecond resolution).
        long[] lat = new long[n];
        int measured = 0;
        for (int i = 0; i < n; i++) {
            lat[i] = appendMs[i] * 1000 - commitUs[i];
            if (commitUs[i] >= cutoffUs) measured++;
        }
        long[] m = new long[measured];
        long warmMax = Long.MIN_VALUE, sum = 0, over = 0;
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (commitUs[i] >= cutoffUs) {
                m[k++] = lat[i];
                sum += lat[i];
                if (lat[i] > burstMs * 1000) over++;
            } else {
                warmMax = Math.max(warmMax, lat[i]);
            }
        }
        Arrays.sort(m);
        // The two legs: commit -> the connector made the event (walsender, decoding, the
        // connector's queues), and the event made -> broker append (conversion, producer,
        // network, broker).
        long[] toConn = new long[measured], connToAppend = new long[measured];
        int nEnv = 0;
        for (int i = 0; i < n; i++) {
            if (commitUs[i] < cutoffUs || envelopeUs[i] == Long.MIN_VALUE) continue;
            toConn[nEnv] = envelopeUs[i] - commitUs[i];
            connToAppend[nEnv] = appendMs[i] * 1000 - envelopeUs[i];
            nEnv++;
        }
        toConn = Arrays.copyOf(toConn, nEnv);
        connToAppend = Arrays.copyOf(connToAppend, nEnv);
        Arrays.sort(toConn);
        Arrays.sort(connToAppend);

        // One-second windows by commit time (measured records only).
        TreeMap<Long, List<Integer>> windows = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            if (commitUs[i] < cutoffUs) continue;
            windows.computeIfAbsent(Math.floorDiv(commitUs[i], 1_000_000L), s -> new ArrayList<>()).add(i);
        }
        outDir.mkdirs();
        StringBuilder bursts = new StringBuilder();
        int nBursts = 0;
        try (PrintWriter ps = new PrintWriter(new File(outDir, "per-second.tsv"), StandardCharsets.UTF_8);
             PrintWriter slow = new PrintWriter(new File(outDir, "slow-records.tsv"), StandardCharsets.UTF_8)) {
            ps.println("second_utc\tepoch_s\trecords\tp50_ms\tp99_ms\tmax_ms\tover_" + fmt(burstMs) + "ms");
            slow.println("offset\tcommit_utc\tconnector_utc\tappend_utc\tlatency_ms\tcommit_to_connector_ms");
            for (var e : windows.entrySet()) {
                List<Integer> idx = e.getValue();
                long[] w = new long[idx.size()];
                int worst = idx.get(0), wOver = 0;
                for (int j = 0; j < w.length; j++) {
                    int i = idx.get(j);
                    w[j] = lat[i];
                    if (lat[i] > lat[worst]) worst = i;
                    if (lat[i] > burstMs * 1000) {
                        if (wOver++ >= 100) continue;
                        boolean env = envelopeUs[i] != Long.MIN_VALUE;
                        slow.println(offset[i] + "\t" + iso(commitUs[i] / 1000.0) + "\t" + (env ? iso(envelopeUs[i] / 1000.0) : "")
                                + "\t" + iso(appendMs[i]) + "\t" + ms(lat[i]) + "\t" + (env ? ms(envelopeUs[i] - commitUs[i]) : ""));
                    }
                }
                Arrays.sort(w);
                long sec = e.getKey();
                ps.println(iso(sec * 1000.0).substring(0, 19) + "Z\t" + sec + "\t" + w.length + "\t" + ms(pct(w, 0.50))
                        + "\t" + ms(pct(w, 0.99)) + "\t" + ms(w[w.length - 1]) + "\t" + wOver);
                if (w[w.length - 1] > burstMs * 1000) {
                    if (nBursts++ > 0) bursts.append(",");
                    bursts.append("{\"second_utc\":\"").append(iso(sec * 1000.0).substring(0, 19)).append("Z\"")
                            .append(",\"epoch_s\":").append(sec)
                            .append(",\"records\":").append(w.length)
                            .append(",\"records_over_threshold\":").append(wOver)
                            .append(",\"p50_ms\":").append(ms(pct(w, 0.50)))
                            .append(",\"p99_ms\":").append(ms(pct(w, 0.99)))
                            .append(",\"max_ms\":").append(ms(w[w.length - 1]))
                            .append(",\"worst_commit_utc\":\"").append(iso(commitUs[worst] / 1000.0)).append("\"")
                            .append(",\"worst_append_utc\":\"").append(iso(appendMs[worst])).append("\"")
                            .append(",\"worst_offset\":").append(offset[worst])
                            .append(",\"worst_commit_to_connector_ms\":").append(envelopeUs[worst] == Long.MIN_VALUE ? "null" : ms(envelopeUs[worst] - commitUs[worst]))
                            .append(",\"worst_connector_to_append_ms\":").append(envelopeUs[worst] == Long.MIN_VALUE ? "null" : ms(appendMs[worst] * 1000 - envelopeUs[worst]))
                            .append("}");
                }
            }
        }

        // Record batches in the partition's segment files (headers only).
        String segments = "null";
        long batches = -1, batchesMeasured = 0, recordsInMeasuredBatches = 0;
        if (partDir != null && partDir.isDirectory()) {
            File[] logs = partDir.listFiles((dir, name) -> name.endsWith(".log"));
            Arrays.sort(logs);
            StringBuilder seg = new StringBuilder("[");
            batches = 0;
            long cutoffMs = cutoffUs / 1000;
            for (File f : logs) {
                long segBatches = 0, segRecords = 0, firstTs = -1;
                // Record batch v2 header: baseOffset int64, batchLength int32, partitionLeaderEpoch
                // int32, magic int8, crc int32, attributes int16, lastOffsetDelta int32,
                // baseTimestamp int64, maxTimestamp int64 (the LogAppendTime), producerId int64,
                // producerEpoch int16, baseSequence int32, recordsCount int32: 61 bytes.
                try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.READ)) {
                    ByteBuffer h = ByteBuffer.allocate(61);
                    long pos = 0, size = ch.size();
                    while (pos + 61 <= size) {
                        h.clear();
                        while (h.hasRemaining() && ch.read(h, pos + h.position()) > 0) { }
                        if (h.hasRemaining()) break;
                        long baseOffset = h.getLong(0);
                        int length = h.getInt(8);
                        if (length <= 0 || h.get(16) != 2) break;
                        long maxTs = h.getLong(35);
                        long c = h.getInt(57);
                        segBatches++;
                        segRecords += c;
                        if (firstTs < 0) firstTs = maxTs;
                        if (baseOffset >= first && maxTs >= cutoffMs) {
                            batchesMeasured++;
                            recordsInMeasuredBatches += c;
                        }
                        pos += 12L + length;
                    }
                }
                batches += segBatches;
                if (seg.length() > 1) seg.append(",");
                seg.append("{\"file\":\"").append(f.getName()).append("\",\"bytes\":").append(f.length())
                        .append(",\"batches\":").append(segBatches).append(",\"records\":").append(segRecords)
                        .append(",\"first_append_utc\":").append(firstTs < 0 ? "null" : "\"" + iso(firstTs) + "\"")
                        .append(",\"first_append_epoch_ms\":").append(firstTs < 0 ? "null" : String.valueOf(firstTs))
                        .append("}");
            }
            segments = seg.append("]").toString();
        }

        int distinct = ids.cardinality();
        StringBuilder out = new StringBuilder();
        out.append("{\"topic\":\"").append(topic).append("\"")
                .append(",\"first_offset\":").append(first)
                .append(",\"end_offset\":").append(end)
                .append(",\"records\":").append(n)
                .append(",\"tombstones\":").append(tombstones)
                .append(",\"avg_key_bytes\":").append(n > 0 ? keyBytes / n : 0)
                .append(",\"avg_value_bytes\":").append(n > 0 ? valueBytes / n : 0)
                .append(",\"distinct_ids\":").append(distinct)
                .append(",\"duplicate_ids\":").append(dupIds)
                .append(",\"records_without_id\":").append(noId)
                .append(",\"min_id\":").append(distinct > 0 ? String.valueOf(minId) : "null")
                .append(",\"max_id\":").append(distinct > 0 ? String.valueOf(maxId) : "null")
                .append(",\"commit_time_from_ts_ms\":").append(fromTsMs)
                .append(",\"warmup_records\":").append(n - measured)
                .append(",\"warmup_max_ms\":").append(warmMax == Long.MIN_VALUE ? "null" : ms(warmMax))
                .append(",\"measured_records\":").append(measured);
        if (measured > 0) {
            out.append(",\"first_measured_commit_utc\":\"").append(iso(firstMeasured(cutoffUs) / 1000.0)).append("\"")
                    .append(",\"latency_ms\":{\"min\":").append(ms(m[0]))
                    .append(",\"mean\":").append(ms(sum / measured))
                    .append(",\"p50\":").append(ms(pct(m, 0.50)))
                    .append(",\"p90\":").append(ms(pct(m, 0.90)))
                    .append(",\"p99\":").append(ms(pct(m, 0.99)))
                    .append(",\"p99_9\":").append(ms(pct(m, 0.999)))
                    .append(",\"max\":").append(ms(m[measured - 1])).append("}");
            out.append(",\"commit_to_connector_ms\":").append(dist(toConn))
                    .append(",\"connector_to_append_ms\":").append(dist(connToAppend));
        } else {
            out.append(",\"latency_ms\":null");
        }
        out.append(",\"burst_threshold_ms\":").append(fmt(burstMs))
                .append(",\"records_over_threshold\":").append(over)
                .append(",\"seconds_measured\":").append(windows.size())
                .append(",\"bursts\":[").append(bursts).append("]")
                .append(",\"record_batches\":").append(batches < 0 ? "null" : String.valueOf(batches))
                .append(",\"record_batches_measured\":").append(batches < 0 ? "null" : String.valueOf(batchesMeasured))
                .append(",\"records_in_measured_batches\":").append(batches < 0 ? "null" : String.valueOf(recordsInMeasuredBatches))
                .append(",\"segments\":").append(segments)
                .append("}");
        System.out.println(out);
    }

    static void add(long off, long cUs, long aMs, long eUs) {
        if (n == offset.length) {
            offset = Arrays.copyOf(offset, n * 2);
            commitUs = Arrays.copyOf(commitUs, n * 2);
            appendMs = Arrays.copyOf(appendMs, n * 2);
            envelopeUs = Arrays.copyOf(envelopeUs, n * 2);
        }
        offset[n] = off;
        commitUs[n] = cUs;
        appendMs[n] = aMs;
        envelopeUs[n] = eUs;
        n++;
    }

    static long firstMeasured(long cutoffUs) {
        long best = Long.MAX_VALUE;
        for (int i = 0; i < n; i++) if (commitUs[i] >= cutoffUs) best = Math.min(best, commitUs[i]);
        return best;
    }

    // Nearest-rank percentile of a sorted array.
    static long pct(long[] sorted, double q) {
        int rank = (int) Math.ceil(q * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    static String dist(long[] sorted) {
        if (sorted.length == 0) return "null";
        return "{\"p50\":" + ms(pct(sorted, 0.50)) + ",\"p90\":" + ms(pct(sorted, 0.90)) + ",\"p99\":" + ms(pct(sorted, 0.99))
                + ",\"p99_9\":" + ms(pct(sorted, 0.999)) + ",\"max\":" + ms(sorted[sorted.length - 1]) + "}";
    }

    static String ms(long us) { return String.format(Locale.ROOT, "%.1f", us / 1000.0); }
    static String fmt(double d) { return d == Math.rint(d) ? String.valueOf((long) d) : String.valueOf(d); }
    static String iso(double epochMs) {
        long msPart = (long) Math.floor(epochMs);
        long usPart = Math.round((epochMs - msPart) * 1000);
        String s = Instant.ofEpochMilli(msPart).toString();   // ...:SS.mmmZ or ...:SSZ
        if (s.length() == 20) s = s.substring(0, 19) + ".000Z";
        if (usPart == 0) return s;
        return s.substring(0, s.length() - 1) + String.format(Locale.ROOT, "%03d", Math.min(999, usPart)) + "Z";
    }

    // {commit time in us, 1 when taken from ts_ms}, or null. The source block of the value's payload
    // (JsonConverter with or without schemas).
    static long[] commitTimeUs(byte[] v) {
        int from = indexOf(v, PAYLOAD, 0, v.length);
        from = from < 0 ? 0 : from + PAYLOAD.length;
        int src = indexOf(v, SOURCE, from, v.length);
        if (src < 0) return null;
        src += SOURCE.length;
        int srcEnd = indexOf(v, new byte[] {'}'}, src, v.length);   // the source block has no nested objects
        if (srcEnd < 0) srcEnd = v.length;
        long commit = Long.MIN_VALUE, fromMs = 0;
        int us = indexOf(v, TS_US, src, srcEnd);
        if (us >= 0) commit = parseLong(v, us + TS_US.length);
        if (commit == Long.MIN_VALUE) {
            int ms = indexOf(v, TS_MS, src, srcEnd);
            if (ms >= 0) {
                long x = parseLong(v, ms + TS_MS.length);
                if (x != Long.MIN_VALUE) { commit = x * 1000; fromMs = 1; }
            }
        }
        if (commit == Long.MIN_VALUE) return null;
        // The envelope's own ts_us (or ts_ms), after the source block: when the connector
        // made the event (Long.MIN_VALUE when absent).
        long env = Long.MIN_VALUE;
        int eus = indexOf(v, TS_US, srcEnd, v.length);
        if (eus >= 0) env = parseLong(v, eus + TS_US.length);
        if (env == Long.MIN_VALUE) {
            int ems = indexOf(v, TS_MS, srcEnd, v.length);
            if (ems >= 0) {
                long x = parseLong(v, ems + TS_MS.length);
                if (x != Long.MIN_VALUE) env = x * 1000;
            }
        }
        return new long[] {commit, fromMs, env};
    }

    static long idOf(byte[] v) {
        int at = indexOf(v, AFTER_ID, 0, v.length);
        if (at < 0) return Long.MIN_VALUE;
        return parseLong(v, at + AFTER_ID.length);
    }

    static long parseLong(byte[] b, int i) {
        boolean neg = false;
        if (i < b.length && b[i] == '-') { neg = true; i++; }
        long x = 0;
        int start = i;
        while (i < b.length && b[i] >= '0' && b[i] <= '9') { x = x * 10 + (b[i] - '0'); i++; }
        if (i == start) return Long.MIN_VALUE;
        return neg ? -x : x;
    }

    static int indexOf(byte[] h, byte[] needle, int from, int to) {
        outer:
        for (int i = from; i <= to - needle.length; i++) {
            for (int j = 0; j < needle.length; j++) if (h[i + j] != needle[j]) continue outer;
            return i;
        }
        return -1;
    }
}
