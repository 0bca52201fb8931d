"""What every attention kernel shares: tensor layouts as [B, N, S, D] views (`layouts`) and band
masks over blocks of scores (`masks`)."""
