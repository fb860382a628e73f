/**
 * One jcstress test per race of the safety model (docs/SAFETY-MODEL.md), each a {@code Real} class and a
 * {@code Broken} one built with a deliberate bug ({@code CacheFault}) that jcstress must show FORBIDDEN. The
 * actor methods repeat in each pair because jcstress reads the annotations on each concrete class.
 *
 * <p>Depends on: {@code mrcache-core}, jcstress.
 */
package io.mrcache.jcstress.races;
