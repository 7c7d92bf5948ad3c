"""How each dynamo.sglang mode is launched, and the CPU stand-ins for sglang's GPU parts."""
