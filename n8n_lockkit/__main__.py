from n8n_lockkit.cli import main

main()
