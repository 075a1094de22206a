"""The kubelet's on-disk device state, read and written exactly as the kubelet does.

- ``devicemanager``: ``kubelet_internal_checkpoint`` (V1 and V2 formats, FNV-1a over go-spew);
- ``allocresp``: the protobuf ``AllocResp`` bytes of its entries;
- ``dra``: ``dra_manager_state`` (1.31+ CRC-32 format; legacy 1.26-1.30 format verified);
- ``drahealth``: ``dra_health_state`` (1.36+, the DRA health-info cache: plain JSON, no checksum);
- ``saved``: those files saved before a test and put back after it;
- ``gotypes``, ``gospew``, ``gojson``: the Go value model both rely on, its spew printing, its
  encoding/json semantics.
"""
