package io.mrcache.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.ucx.transport.TransportReport;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code demo --transport ucx} when the peer is lost: the run ends in order, with the table of every column that ran,
 * the one that ended early named with its reason, no stack trace, and exit status 3. The columns' transports are
 * stand-ins here; {@code TwoProcessTransportTest} kills a real peer.
 */
class UcxDemoTest {
    static final long OPS = 20_000;

    static TransportReport clean(String cache) {
        return new TransportReport(cache, OPS, 0, 0, 5_000, 5_000, 0, 900, null, 1.0);
    }

    /** Runs the demo over {@code reports} (an IOException stands for a column whose peer never came). */
    static String[] demo(boolean json, List<String> ran, Object... reports) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
            int status = UcxDemo.run(OPS, 7, json, 7000, c -> {
                Object r = reports[ran.size()];
                ran.add(c.title());
                if (r instanceof IOException e) {
                    throw e;
                }
                return (TransportReport) r;
            });
            return new String[] {String.valueOf(status), bytes.toString(StandardCharsets.UTF_8)};
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }

    @Test
    void aPeerLostInTheThirdColumnIsShownAsEndedEarlyWithItsOwnExitStatus() {
        List<String> ran = new ArrayList<>();
        TransportReport shortRun = new TransportReport("mrcache + violating peer", 1_725, 3, 0, 400, 400, 12, 80,
                "its control connection closed", 0.4);
        String[] r = demo(false, ran, clean("naive"), clean("mrcache"), shortRun);
        assertEquals("3", r[0], r[1]);
        assertTrue(r[1].contains("ENDED EARLY: the 'mrcache, violating peer' column ended early, after 1,725 of 20,000"
                + " operations: the peer was lost (its control connection closed)"), r[1]);
        assertTrue(r[1].contains("(ENDED EARLY)"), "the column is marked in the table: " + r[1]);
        assertTrue(r[1].contains("exit status 3"), r[1]);
        assertFalse(r[1].contains("\tat "), "no stack trace: " + r[1]);
    }

    @Test
    void aPeerLostInTheMrcacheColumnStopsTheRunWithoutWaitingForAnotherPeer() {
        List<String> ran = new ArrayList<>();
        TransportReport lost = new TransportReport("mrcache", 91_218 / 10, 0, 0, 2_000, 2_000, 0, 300,
                "its endpoint failed (UCX status -25: Connection reset by remote peer)", 3.0);
        String[] r = demo(false, ran, clean("naive"), lost, clean("never"));
        assertEquals(List.of("naive cache (UNSAFE)", "mrcache"), ran, "the third column waited for no peer");
        assertEquals("3", r[0], r[1]);
        assertTrue(r[1].contains("'mrcache' column ended early, after 9,121 of 20,000"), r[1]);
        assertTrue(r[1].contains("'mrcache, violating peer' did not run"), r[1]);
        assertTrue(r[1].contains("zero corrupted buffers and zero stale reads in the 9,121 operations it ran"), r[1]);
        assertTrue(r[1].contains("naive cache (UNSAFE)") && r[1].contains("corrupted buffers"), "the table: " + r[1]);
    }

    @Test
    void aColumnWhosePeerNeverConnectedIsNamedAndTheColumnsThatRanAreShown() {
        List<String> ran = new ArrayList<>();
        String[] r = demo(false, ran, clean("naive"), clean("mrcache"),
                new IOException("no peer connected to 0.0.0.0/0.0.0.0:7000 within 60 s"));
        assertEquals("3", r[0], r[1]);
        assertTrue(r[1].contains("the 'mrcache, violating peer' column did not run: no peer connected"), r[1]);
        assertTrue(r[1].contains("The table shows the 2 column(s) that ran"), r[1]);
        assertFalse(r[1].contains("\tat "), r[1]);
    }

    @Test
    void mrcachesCorruptionStillExitsOneWhenThePeerIsLostAfterIt() {
        TransportReport bad = new TransportReport("mrcache", OPS, 2, 0, 0, 0, 0, 900, null, 1.0);
        TransportReport lost = new TransportReport("violating", 10, 0, 0, 0, 0, 0, 1, "gone", 0.1);
        String[] r = demo(false, new ArrayList<>(), clean("naive"), bad, lost);
        assertEquals("1", r[0], r[1]);
        assertTrue(r[1].contains("FAILED: mrcache showed 2 corrupted buffers"), r[1]);
    }

    @Test
    void theJsonSaysWhichColumnEndedEarly() {
        TransportReport lost = new TransportReport("mrcache", 100, 0, 0, 0, 0, 0, 10, "gone", 0.1);
        String[] r = demo(true, new ArrayList<>(), clean("naive"), lost);
        assertEquals("3", r[0], r[1]);
        com.google.gson.JsonObject o = com.google.gson.JsonParser.parseString(r[1].trim()).getAsJsonObject();
        assertEquals("incomplete", o.get("judged").getAsString());
        assertTrue(o.get("endedEarly").getAsString().contains("'mrcache' column ended early"), r[1]);
        assertEquals(2, o.getAsJsonArray("columns").size());
        assertTrue(o.getAsJsonArray("columns").get(1).getAsJsonObject().get("peerLost").getAsBoolean());
    }
}
