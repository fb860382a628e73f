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
        assertEquals(3, lines.getLength());
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < lines.getLength(); i++) {
            Element e = (Element) lines.item(i);
            ids.add(e.getAttribute("id"));
            assertEquals(11, e.getAttribute("points").split(" ").length, "one point per size");
        }
        assertEquals(List.of("no-cache", "cache-hit", "network"), ids);
    }
}
