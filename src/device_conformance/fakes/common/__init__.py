"""What every fake shares, so a new fake (or a defective mode of one) plugs into one seam: the control
channel (control.py), the call log and its typed records (calls.py), the fault model (faults.py), the
gRPC glue that applies both (rpc.py), and the process and handle a test holds (process.py, handle.py)."""
