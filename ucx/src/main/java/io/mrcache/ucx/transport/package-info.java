/**
 * A small but real transport on jucx that embeds the cache as a transport author would: an owner
 * ({@link io.mrcache.ucx.transport.UcxOwner}) whose buffers come from a slab allocator with the cache's free hook,
 * and a peer ({@link io.mrcache.ucx.transport.UcxPeer}, another process) that does RDMA writes and reads with the
 * packed remote keys the owner sends and answers each with a completion message. Owner and peer find each other
 * over a TCP connection ({@code --listen PORT} / {@code --connect HOST:PORT}).
 */
@NullMarked
package io.mrcache.ucx.transport;

import org.jspecify.annotations.NullMarked;
