"""Where nodes sit on n8n's canvas: geometry, and placing and framing added blocks."""
