package io.mrcache.cli.cost;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mrcache.core.cost.NetworkModel;
import io.mrcache.core.cost.RegistrationCostModel;
import io.mrcache.core.cost.Savings;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

class ChartSvgTest {

    @Test
    void theSvgIsWellFormedWithThreeSeries() throws Exception {
        Savings.WhatIf w = new Savings.WhatIf(new NetworkModel(400, 0.8, 2, 5e-6), RegistrationCostModel.defaults(),
                1, 50e-9, 1e-6);
        String svg = ChartSvg.render(Savings.table(w), "message time, 400 Gb/s");
        Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder()
                .parse(new ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
        assertEquals("svg", doc.getDocumentElement().getTagName());
        NodeList lines = doc.getElementsByTagName("polyline");
        assertEquals(4, lines.getLength(), "no cache, at the hit ratio, every hit, network alone");
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < lines.getLength(); i++) {
            Element e = (Element) lines.item(i);
            ids.add(e.getAttribute("id"));
            assertEquals(11, e.getAttribute("points").split(" ").length, "one point per size");
        }
        assertEquals(List.of("no-cache", "hit-ratio", "cache-hit", "network"), ids);
        // each legend swatch has its series' colour, width and dashes
        NodeList all = doc.getElementsByTagName("line");
        List<Element> swatches = new ArrayList<>();
        for (int i = 0; i < all.getLength(); i++) {
            Element e = (Element) all.item(i);
            if ("swatch".equals(e.getAttribute("class"))) {
                swatches.add(e);
            }
        }
        assertEquals(4, swatches.size());
        for (int i = 0; i < 4; i++) {
            Element line = (Element) lines.item(i);
            Element swatch = swatches.get(i);
            for (String attr : new String[] {"stroke", "stroke-width", "stroke-dasharray"}) {
                assertEquals(line.getAttribute(attr), swatch.getAttribute(attr), ids.get(i) + " " + attr);
            }
        }
    }
}
