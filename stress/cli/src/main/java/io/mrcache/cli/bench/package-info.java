/**
 * The parts of {@code ./mrcache bench}: reading JMH's JSON results, reading the UCX harness's lines, telling
 * which repeats another process disturbed, and the report (table, JSON and the generated part of
 * {@code docs/PERFORMANCE.md}).
 */
@NullMarked
package io.mrcache.cli.bench;

import org.jspecify.annotations.NullMarked;
