"""A kind node image built with no registry: Debian rootfs, kind's base files, locally built components
and preloaded images (`device-conformance cluster build-node-image --provider kind`).

Modules, one job each: kindbase (kind's base-image recipe from its Go module), rootfs (debootstrap),
components (Go builds), images (OCI images preloaded in the node), manifests (CNI and storage
replacements), assemble (the node filesystem and the docker-loadable tarball), cache (inputs hash).
"""
