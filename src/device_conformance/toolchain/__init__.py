"""What a cluster is made of, built or fetched before any cluster starts: Kubernetes server binaries
(binaries, gobuild), containerd (containerd), the pod images (images), and the cache they share (cache).
"""
