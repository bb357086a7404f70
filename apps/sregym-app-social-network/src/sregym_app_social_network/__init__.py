"""Social Network: a Thrift microservice application for SREGym.

Modelled on the public DeathStarBench Social Network topology: Debian nginx in front of a small
HTTP-to-Thrift gateway, then compose-post, text, user-mention, url-shorten, media, unique-id, user,
social-graph, post-storage, user-timeline and home-timeline, each its own process speaking Apache
Thrift (binary protocol, framed transport), plus media-frontend for media uploads. PostgreSQL holds
documents where the original uses MongoDB; Redis holds timelines and the social-graph cache;
memcached caches users, posts, URLs and media. One package, one image; ``python -m
sregym_app_social_network.serve <name>`` chooses the service.
"""

from __future__ import annotations

__version__ = "0.2.0"
IMAGE_REPO = "sregym/social-network"
IMAGE_TAG = "1.0"
